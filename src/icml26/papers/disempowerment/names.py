"""Gazetteer of personal names for the PII scrubber (our own list, written for this module).

Given names and surnames of many origins (English, Spanish, Portuguese, French, German, Italian,
Dutch, Nordic, Slavic, Greek, Arabic, Turkish, Persian, South Asian, Chinese, Japanese, Korean,
Vietnamese, West/East/Southern African, Hebrew), lower case. The scrubber treats a *capitalised*
token from these lists as a name. Names that are also everyday English words (``will``, ``may``,
``grace``, ``brown``) are in :data:`AMBIGUOUS` and count as a name only when another capitalised
token follows them (``Grace Okafor``) or a name cue precedes them.

The list is a net, not a guarantee: the scrubber also removes capitalised words after name cues
("my name is", titles, signatures, relations) and unknown capitalised words inside a sentence.
"""

from __future__ import annotations

_GIVEN = """
aaliyah aaron abbas abdul abdullah abebe abel abena abhishek abigail abimbola abiodun ada adaeze
adam adebayo adedayo adekunle adel adela adele adeola adesua aditi aditya adnan adriana adrian
adrien afia afsaneh agata agnes agnieszka ahmad ahmed ahmet aidan aiden aiko aisha aishwarya
aiyana akash akemi akiko akira akosua akua alain alan alana albert alberto alejandra alejandro
aleksandr aleksandra aleksei alessandra alessandro alex alexa alexander alexandra alexandre
alexei alexis alfonso alfred alfredo ali alice alicia alina alisha alison alistair aliyu allan
allison alma alonso alvaro amadou amal amanda amara amaya amber ambrose amelia amina amir amira
amit amna amos amy ana anahita ananya anastasia anders andre andrea andreas andrei andres andrew
andrzej angela angelica angelo anika anil anita anja anjali ankit ann anna annabel anne anneke
annika anoushka anthony antoine antonia antonio anya aoife arash aria ariana ariel arjun arman
armando arnav arne arthur arturo arvid arya asad asha ashanti ashley ashok asif aslan astrid
ata atsuko aurelie austin ava avery axel ayaan ayesha ayumi azadeh babajide babak bahar
bakari baraka barbara barry bartosz basil bastian beatrice beatriz beatrix bee bela ben
benedikt benjamin bernard bernardo bertrand beth bethany bianca bilal birgit bjorn blessing bo
bogdan boris brandon brenda brendan brian bridget brigitte bruno bryan caitlin callum camila
camille candice carina carl carla carlos carmen carol carolina caroline carsten casey caspar
catalina catarina catherine cecilia cedric celine cesar chaim chandra chanel charles charlotte
chen chiamaka chidi chidinma chinedu chinwe chioma chiara chloe chris christian christina
christine christoph christopher chukwuemeka ciara cindy claire clara claudia clement colin
connor constantin cora cormac cristina cristian cynthia dagny daisuke dalia damian damien dan
dana daniel daniela daniele danielle daniyar dante daria dariusz darius darko darren dasha
david dawit dean debora deborah deepak deepika deirdre demetrius denis denise dennis derek
desmond diana diane diego dieter dilnoza dimitri dimitrios dina dmitri dmitry dolores
dominik dominika dominic donald donna dorota dorothy douglas duc dylan ebere ebony edgar
edith edmund eduardo edward efua ehsan eilidh eitan ekaterina elaine eleanor elena eleni eli
elias elif elijah elin elisa elisabeth elise eliza elizabeth ella ellen elliot elodie eloise
elsa emeka emil emilia emiliano emilie emily emine emma emmanuel emre enrique enzo eoin erik
erika erin ernesto esben esperanza esra esteban estelle esther ethan eugene eun eva evan
evelyn ezra fabian fabio fahad faisal farah farid farida farhan fatima fatma federica
federico felipe felix fergus fernanda fernando filip filipa fiona florence florian folake
francesca francesco francis francisco franco francois franziska freddie frederick freya
fumiko gabriel gabriela gabriele gabrielle gareth gary gaurav gemma genevieve geoffrey george
georgia gerald gerard gerhard giacomo gianluca gianni gideon gilbert gillian gina giorgos
giovanni giulia giulio giuseppe gloria gonzalo gordon graham greta gregory gudrun guillaume
gulnara gunnar gustavo gwen hadi hafsa hailey hakan hamid hamza hana hannah hans hanna haruka
haruki haruto harvey hasan hassan hector heidi heike helen helena helga hemant henrik henry
hiba hideo hina hiro hiroshi hiroko hitomi hoang hugo hyun ian ibrahim idris ifeoma ignacio
igor ikechukwu ilana ilse imani imran ines inga ingrid ioana ioannis irene irina iris isaac
isabel isabella isabelle ishaan ismail ivan ivana ivy iwona jacek jack jackson jacob jacqueline
jaime jakub jamal james jamie jan jana jane janet janice janine jannik jared jasmine jason
javier jaya jayden jean jeanne jeffrey jelena jennifer jens jeremy jerome jesper jesse jessica
jesus ji jia jiho jin jing joanna joao joaquin jocelyn joel johan johanna johannes john jon
jonas jonathan jorge jose josef joseph josephine joshua josiah juan judith julia julian
juliana julie julien julio jun junaid jurgen justin jyoti kaito kamal kamala kamila karen
karim karin karina karl karolina kasia katarzyna kate katerina katharina katherine kathleen
katie katja kavya kayode keiko keisha keith kemal kenji kenneth kenta kerstin kevin khadija
khalid kiara kim kimberly kiran kirsten klaus kofi kojo kosuke kristian kristina kumar kwabena
kwame kwasi kyle kyoko lakshmi lamar lars laszlo latisha laura lauren laurent lea leah leila
lena leo leon leonardo leonie lesley leticia liam lidia lila lina linda lindiwe ling lisa
liv lorena lorenzo louis louise luca lucas lucia luciana lucie lucy luis luisa lukas luke
lupita lwazi lydia maciej madeleine madison magdalena magnus mahmoud maia maja makoto malak
malcolm malik mamadou manish manon manuel manuela marc marcel marcela marcin marco marcos
marcus margaret margarita mari maria mariam marian mariana marianne marie marina mario marion
marisol marius marjorie marko marta martin martina maryam mary masako masato mason mateo
mateus mathias mathilde matilda matteo matthew matthias maureen mauricio maximilian maya
megan mehdi mehmet mei melanie melissa mercy mia michael michaela michal michel michelle
miguel mihai mikael mikhail mila milan milena min minh mira miriam mitsuki mohamed
mohammad mohammed moira monika morgan moritz moses muhammad mustafa nadia nadine naledi
nam nana nanami naoki naomi narges nasser natalia natalie natasha nathan nathaniel navid
nazanin neha nelson nia niamh nicholas nicola nicolas nicole niels nikhil nikita nikolai
nikolaos nils nina nisha noa noah noemi nomvula nora norah nour nuno nuria obinna octavia
odette ogechi oksana olga oliver olivia olumide oluwaseun omar onur oren orla oscar osagie
oskar otto owen pablo padma palesa paolo parisa parveen pascal patricia patrick paul paula
paulina pavel pedro peter petra philip philippe pierre pieter pilar piotr pooja pradeep
prakash pranav preeti priya priyanka qasim quentin rachel radek rafael rafaela rahul raj
rajesh rajiv rakesh ramesh ramon rana randall raquel rashid raul ravi rayan rebecca reggie
reiko renata rene renee reza rhys ricardo richard riley rina rita roberta roberto robert
rocio rodrigo rohan roisin roland roman ronaldo rosa rosalind rosario roxana ruby rui rukhsana
rupert ruth ryan ryo ryota saanvi saba sabine sabrina sachiko sadia saeed sahil said sakura
salma salvatore sam samantha samir samira samuel sandeep sandra sanjay santiago sara sarah
sasha satoshi saul scott sean sebastian selin sergei sergio seun shabnam shanice shanthi
sharon shauna sheila shira shirin shivani shota shreya shu siddharth sienna sigrid silvia
simon simone sina siobhan siddiqa sipho siti sofia sofie sonia sophia sophie soren stefan
stefania stefano stella stephan stephanie stephen steven sun suniti sunil susan susanna
suzanne sven svetlana swati sylvia tadashi tahir takashi takumi tamar tamara tanvir tanya
tariq tatiana taylor teresa thabo thandiwe theo theodore theresa thi thomas tiago tim timothy
tobias tomas tomasz tomoko tonya torsten tove tran trinity tunde tyler ugo uma umar ursula
uzma valentina valentin valeria valerie vanessa varun vasilis vera veronica veronika victoria
vijay vikram viktor viktoria vincent vincenzo violeta vivek vladimir wanjiru wei wendy werner
wiktoria wilhelm william wojciech xavier xiao xin yael yan yannick yara yasmin yasmina yasmine
yaw yemi yesenia yeon yi ying yoshiko yoshio youssef yu yuki yuko yulia yuri yusuf yvonne
zainab zahra zanele zara zeynep zhang zhen zoe zofia zoltan zuzana
"""

_SURNAMES = """
abbott abdullah abe acheampong adams adebayo adeleke adeyemi agarwal aguilar ahmed akhtar
akinola alexander ali allen almeida alvarez anderson andersson andrade antonelli appiah
araujo arslan asante bailey baker banda banerjee barbieri barnes bauer becker bell benedetti
bergstrom bernard bertrand bhatt bianchi blanco bondarenko bose brown bruno butler
caldwell campbell carter castillo castro chakraborty chan chang chaudhary chen cheng chopra
chowdhury clark colombo conti cooper costa cruz da dang das davies davis de delgado demir
dhillon diallo diaz dijkstra dlamini doan dubois dumont duarte edwards eze evans fernandes
fernandez ferrari ferreira fischer flores fontaine fraser fuchs garcia gomes gomez gonzalez
gupta gutierrez haas hall hansen harris hashemi hernandez herrera hoang hoffmann horvat hossain
huang hughes hussain ibrahim iqbal ito ivanov ivanova jackson jain jakobsen jansen jensen
jimenez johansson johnson jones joshi kaminski kang kapoor kariuki kato kaya khan khumalo
kim kimura klein kobayashi koch kowalczyk kowalski kozlov kruger kumar kuznetsov lambert
larsen laurent le lee lehmann leroy lewis li lim lin lindberg liu lopez lozano lu ma
mahlangu malik mancini marchetti marin markovic martin martinez martins mazur mehta mendes
mendoza mensah meyer miller mishra mitchell mohamed mohammadi molina moore morales moreau
moreno moretti morris mukherjee muller murphy murray mwangi nair nakamura nascimento navarro
nel ng nguyen nielsen njoroge novak novotny nowak nwachukwu nwosu obi odhiambo ogunleye okafor
okonkwo okoro olsen oliveira olsson omar onyango ortiz osei otieno owusu ozturk park patel
pereira perez peters petrov petrova pham phillips pillai popescu popov powell price quaye
rahman ramirez ramos rao rashid reddy reyes ricci richter rinaldi rivera roberts robinson
rodrigues rodriguez rojas romano romero rossi roux ruiz russo saito salazar sanchez santos
sato schmidt schneider schulz schwarz scott sharma shah shevchenko silva simmons singh
smith sokolov song sousa suarez sullivan suzuki takahashi tanaka taylor thapa thomas thompson
torres tran turner uchenna vargas vasquez vega verma vieira vogel volkov vu wagner walker
wang wanjiku watanabe weber white williams wilson wojcik wong wright wu xu yadav yamada
yamamoto yang yilmaz yoshida young yu zhang zhao zhou zhu zimmermann zulu
"""

# names that are also everyday English words (or common capitalised words at a sentence start)
AMBIGUOUS = frozenset("""
april august autumn bee bell bill bo brown bruno cook crystal dawn dean faith frank grace guy
hall hope ivy jack jade joy june kim lamar le lee li liv long lu ma may mercy miller morgan
nam rose ruby said sam scott song summer sun taylor turner tran uma victor will white wood
young yu jun min park hope price bailey baker butler carter clark cooper hughes king lewis
martin murray nel ng park powell simmons sullivan thomas walker wright long case art
mark bill rob sue chase neil pat sandy rich dash bliss sunny star river sky angel
""".split())

GIVEN_NAMES = frozenset(_GIVEN.split())
SURNAMES = frozenset(_SURNAMES.split())
ALL_NAMES = GIVEN_NAMES | SURNAMES

__all__ = ["ALL_NAMES", "AMBIGUOUS", "GIVEN_NAMES", "SURNAMES"]
